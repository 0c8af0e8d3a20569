//! The end-to-end suite, one test binary: each module starts real `hidden-front` processes on
//! loopback over real Postgres. One binary rather than one per file, because every binary links
//! the whole gateway and its dependencies: 23 links cost minutes and gigabytes of disk.

mod admin;
mod bad_input_sweep;
mod bad_input_sweep_ws;
mod bench_runs;
mod cluster_judge;
mod connect;
mod full_game;
mod gateway_grpc;
mod gateway_leaks;
mod gateway_websocket;
mod gunjin_game;
mod hostile_connections;
mod lifecycle_feed;
mod matchmaking;
mod metrics;
mod online_rules;
mod organiser;
mod outages;
mod public_port;
mod refusals;
mod replay_export;
mod replay_gateway;
mod sharding;
mod shutdown;
mod sigkill_restart;
mod tournament;
mod tracing;
mod two_processes;
mod web_client;
mod webhooks;
