"""Attacks: background-knowledge categories and their matching rules (DESIGN.md section 5)."""
