//! Helpers shared by the integration tests.

use std::path::PathBuf;

/// The path of fixture `name` in tests/fixtures/.
pub fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .to_string_lossy()
        .into_owned()
}
