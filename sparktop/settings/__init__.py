"""Every file the user writes, read through one pydantic model each: config.toml (config.py), themes
(theme.py), the catalog (catalog.py), plan files (plan.py). files.py does what they share once: XDG paths,
reading TOML, the line of a key, and the `FILE:LINE: key: what is wrong` wording. No Textual here."""
