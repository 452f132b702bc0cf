"""Where snapshots come from: the `SnapshotSource` base, the live sampler, the demo simulation, replay and
recording, and the factory that picks one. Sources use the collectors; collectors never import a source."""
