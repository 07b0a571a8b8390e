"""The platform: the 2011 cell's machines, its SimGrid XML with energy, and machine failures as Batsim events."""
