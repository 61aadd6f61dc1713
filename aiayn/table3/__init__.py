"""Table 3 of the paper, rerun at CPU scale: its rows, the protocol, the report.  Section 6.2.

``rows`` scales each variation of Table 3 around a small base in the paper's proportions;
``results`` holds the protocol every run of a results directory shares and the JSONL of
finished runs; ``stats`` pairs the runs by seed and reads a verdict from the 95% interval of
their differences; ``findings`` checks the paper's findings with it (the old range rule
beside it); ``plots`` draws one plot per row group, ``curves`` the learning curves and the
equal-compute view of row C; ``report`` sets the paper's figures beside ours; ``run`` trains,
scores and reports (``aiayn table3``).
"""
