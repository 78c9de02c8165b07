"""Many machines behind one address (`apace cluster`, Ray): docs/cluster.md."""
