"""The `computerops` command line: option parsing, and what each command prints (console.py)."""
