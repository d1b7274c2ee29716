"""Tooling over the task catalog: checks, audits with mutants, blind cases, subsets, the corpus, the task document."""
