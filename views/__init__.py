"""The read-only view of one trajectory that a monitor program sees (docs/DESIGN.md: views)."""
