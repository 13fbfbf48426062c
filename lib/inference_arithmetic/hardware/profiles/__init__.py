"""Serving engines' kernel properties, one JSON file each, every property with its source."""
