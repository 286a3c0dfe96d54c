//! Shared glue of the ovni command-line tools.
