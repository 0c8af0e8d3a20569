//! The commit the binary is built from, for the `hf_build_info` metric: `HF_BUILD_COMMIT` when
//! set (a container build without `.git`), else `git rev-parse --short HEAD`, else `unknown`.
//! Never fails: a build from a source tarball, or without git installed, says `unknown`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=HF_BUILD_COMMIT");
    let commit = std::env::var("HF_BUILD_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(git_commit)
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=HF_BUILD_COMMIT={}", commit.trim());
    // Rebuild when HEAD moves (a commit, a checkout), not on every other change under .git.
    let watched: Vec<PathBuf> = git_dir()
        .map(|git| {
            let mut paths = vec![git.join("HEAD"), git.join("packed-refs")];
            if let Ok(head) = std::fs::read_to_string(git.join("HEAD"))
                && let Some(reference) = head.trim().strip_prefix("ref: ")
            {
                paths.push(git.join(reference));
            }
            paths
        })
        .unwrap_or_default()
        .into_iter()
        .filter(|path| path.exists())
        .collect();
    if watched.is_empty() {
        println!("cargo:rerun-if-changed=build.rs");
    }
    for path in watched {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

fn git_commit() -> Option<String> {
    let out = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()?;
    let commit = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !commit.trim().is_empty()).then_some(commit)
}

/// The repository's git directory (`git rev-parse --git-dir`, relative to this crate).
fn git_dir() -> Option<PathBuf> {
    let out = Command::new("git")
        .args(["rev-parse", "--git-dir"])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let dir = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from)?;
    Some(match dir.is_absolute() {
        true => dir,
        false => Path::new(&manifest).join(dir),
    })
}
