//! FTI-FF.
