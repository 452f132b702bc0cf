"""Every command of `sparktop`, one module each: `main` parses the command line and hands it to the command
named (the dashboard when none is); `common` holds what commands share (source and settings flags, exit
codes). Nothing outside this package imports it but `sparktop/__main__.py` and the `sparktop` entry point."""

import os

# sparktop uses no pydantic plugin, and looking for them reads every installed package's metadata when the
# first model is built (~6 ms of the start, 20 on a loaded machine). Here, before any command imports a model;
# a user's own setting stands.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
