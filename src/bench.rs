//! `glimpse bench`: fixed positions, speed and a signature.
