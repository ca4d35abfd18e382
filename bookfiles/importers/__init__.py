"""Importers: turn outside formats (plain-text novels) into a book folder (docs/import.md)."""
