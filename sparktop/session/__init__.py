"""A dashboard session without the dashboard: the Session every view reads, the headless runner, replay
playback, the tables' rows and the `B` history export."""
