//! Rebuilds the crate when a migration changes: `sqlx::migrate!` embeds the migration files at
//! compile time, and cargo would not otherwise notice a new or edited file.

fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
}
