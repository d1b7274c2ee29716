"""The report of a run, recomputed from its episode records (and, for provenance, its manifest).

Every figure names its numerator and denominator; a rate with a zero denominator is None, never 0 or NaN.
Intervals are 95%: Wilson score intervals over episodes, and a bootstrap that resamples tasks (episodes of one
task are not independent). Unknown values (tokens an endpoint did not report, provenance nobody recorded) stay
None and are counted apart; nothing is guessed.

One concern a module: `vocabulary` (the words counted by, in report order), `figures` (proportions, intervals,
pass^k), `outcomes` (outcome tables), `faults` (exposure, recovery funnel, loops), `security`, `serving`,
`persistence` (each study's figures and its blocks), `provenance` (claimed against observed), `run` (`RunReport`
and its JSON), `tables` + `layout` (the report laid out once as typed tables, which `computerops.cli.console` and
`computerops.report.html` render). Import from the module that defines a name: `from computerops.report.run import
run_report`.

This package imports nothing, on purpose. The report's assembly (`run`, `layout`) goes through the study registry
(computerops/studies/registry.py), and the studies read their figures and blocks from this package's study modules
(`faults`, `security`, `serving`, `persistence`, `tables`). Importing any submodule runs this `__init__.py` first,
so a facade that re-exported `run` or `layout` would make every study import the assembly that imports it: a circle
(tests/test_import_graph.py). A facade re-exporting only the lower modules would be the same trap one import away.
"""
