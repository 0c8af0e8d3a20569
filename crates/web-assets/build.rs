//! Rebuilds the crate when anything under `web/dist` changes, files added or removed included
//! (rust-embed's `include_bytes!` tracks only the files that existed at the last build), and
//! stops the build with a clear message when the bundle is missing.

use std::path::Path;

fn main() {
    let dist = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../web/dist");
    // A directory here makes cargo compare the modification time of every file under it.
    println!("cargo:rerun-if-changed={}", dist.display());
    for required in ["index.html", "inputs.sha256"] {
        if !dist.join(required).is_file() {
            panic!(
                "web/dist/{required} is missing: the built browser client is committed under \
                 web/dist; run scripts/build-web (or restore web/dist from git)"
            );
        }
    }
}
