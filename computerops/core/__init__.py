"""The bottom layer: vocabularies, formats and defaults every package shares.

Every package of ours may import `computerops.core`; it imports nothing of ours outside itself (tests/test_layers.py
keeps it so). `computerops/__init__.py` is empty, so importing it loads nothing else of the CLI's.
"""
