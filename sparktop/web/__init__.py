"""`sparktop web`: the dashboard in a browser (the checked HTTP server, the sessions' lifeline) and its
page."""
