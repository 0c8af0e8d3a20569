//! The binary's own tests, one test binary: the application in one process, the operator's
//! errors, the terminal client, the rules CLI and token minting. One binary rather than one per
//! file, because each links the whole application: separate links cost minutes and disk.

mod application;
mod common;
mod operator_errors;
mod play_board;
mod play_board_gunjin;
mod play_client;
mod play_commands;
mod play_connect;
mod play_lobby;
mod rules_cli;
mod rules_cli_differential;
mod rules_cli_gunjin;
mod token;
