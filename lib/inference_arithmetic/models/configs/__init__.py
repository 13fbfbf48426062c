"""Hugging Face config.json files of the registry models, each with its source."""
