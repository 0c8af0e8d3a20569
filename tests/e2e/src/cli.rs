//! Running the `hidden-front` binary's command-line verbs from a test, and the temporary files
//! they write.

use crate::binary;
use std::path::PathBuf;
use std::process::Output;

/// Runs the binary with `args` to its end.
pub async fn run(args: &[&str]) -> Output {
    tokio::process::Command::new(binary())
        .args(args)
        .output()
        .await
        .expect("the binary runs")
}

/// A process's output as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A file in the temporary directory, named after the test and this process, removed when
/// dropped.
pub struct TempFile(pub PathBuf);

impl TempFile {
    /// `hf-<test>-<pid>-<name>` in the temporary directory (not created).
    pub fn new(test: &str, name: &str) -> TempFile {
        TempFile(std::env::temp_dir().join(format!("hf-{test}-{}-{name}", std::process::id())))
    }

    /// Its path as text, for command lines.
    pub fn path(&self) -> &str {
        self.0.to_str().expect("a UTF-8 temporary path")
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
