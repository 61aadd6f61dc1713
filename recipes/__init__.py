"""The product's recipes: one TOML file per number aiayn quotes, and their runner (run.py).

Installed as ``aiayn.recipes`` (pyproject.toml maps this folder there), so that a wheel carries
the recipes; ``aiayn demo`` reads ``demo.toml`` through ``importlib.resources``.
"""
