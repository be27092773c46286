"""All file reading and writing: raw inputs, the catalog folder, atomic writes."""
