"""The synthetic web applications of ComputerOps and their shared kit.

`sites.registry.SITES` names every site the server can mount; `sites.kit` holds what they share.
"""
