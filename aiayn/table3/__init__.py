"""Table 3 of the paper, rerun at CPU scale: its rows, the protocol, the report.  Section 6.2.

``rows`` scales each variation of Table 3 around a small base in the paper's proportions;
``results`` holds the protocol every run of a results directory shares and the JSONL of
finished runs; ``report`` sets the paper's figures beside ours, checks the paper's findings
against the seeds' spread and draws one plot per row group. ``aiayn table3`` runs it all.
"""
