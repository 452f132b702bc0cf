"""`sparktop guard`: the headless service that sees the freeze coming (forecast, warnings, black box) and,
only where the user listed what it may stop, acts first. Textual-free."""
