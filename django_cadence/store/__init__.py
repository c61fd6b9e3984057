"""Everything that differs by database vendor."""
