"""The `compactlab` command: argument parsing only; every command calls the library."""
