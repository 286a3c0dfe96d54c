//! The ovni trace format v3.
