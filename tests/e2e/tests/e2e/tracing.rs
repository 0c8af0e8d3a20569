//! Traces end to end: the real binary exports its spans over OTLP/gRPC to a receiver in this
//! test, and one move played through the gateway is one trace, from the gateway's `Play` RPC
//! through the session's `SubmitMove` RPC (trace context carried in gRPC metadata) down to the
//! Postgres append, and back out to both players' streams (each delivery a span of the same
//! trace), with no hidden rank in any span.

use hidden_front_e2e::client::{self, side_of};
use hidden_front_e2e::gateway::{self, PlayerClient, context};
use hidden_front_e2e::otlp::{OtlpReceiver, ReceivedSpan};
use hidden_front_e2e::{Server, TestDatabase, pb};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// How long the spans of the move may take to arrive (export runs every 100 ms here).
const DEADLINE: Duration = Duration::from_secs(30);

const PLAY: &str = "hiddenfront.v1.PlayerService/Play";
const SUBMIT_MOVE: &str = "hiddenfront.v1.SessionService/SubmitMove";
const APPEND: &str = "store.append";
const DELIVER: &str = "gateway.deliver";

/// Words of attribute keys that would mean a span carries pieces, deployments or snapshots.
const FORBIDDEN_KEYS: &[&str] = &[
    "piece",
    "kind",
    "rank",
    "deployment",
    "placement",
    "snapshot",
];

/// Words of attribute values that would mean a piece, an event or a snapshot was written out
/// (method names such as `ConfirmDeployment` may say "deployment").
const FORBIDDEN_VALUES: &[&str] = &["piece", "kind", "rank", "placement", "snapshot"];

/// The spans of `trace_id` from `span` up to its root, `span` first.
fn ancestors<'a>(spans: &'a HashMap<String, ReceivedSpan>, span: &'a ReceivedSpan) -> Vec<&'a str> {
    let mut chain = vec![span.name.as_str()];
    let mut at = span;
    while !at.parent_span_id.is_empty() {
        match spans.get(&at.parent_span_id) {
            Some(parent) => {
                chain.push(parent.name.as_str());
                at = parent;
            }
            None => break,
        }
    }
    chain
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_move_is_one_trace_from_gateway_to_postgres() {
    let mut receiver = OtlpReceiver::start().await;
    let endpoint = receiver.endpoint();
    let db = TestDatabase::create().await;
    let server = Server::start_with_env(
        "traced",
        db.url(),
        &[],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
            ("OTEL_SERVICE_NAME", "hidden-front-e2e"),
        ],
    )
    .await;

    // A game in play: both sides confirm the deployment they were dealt.
    let mut session = server.connect().await;
    let key = uuid::Uuid::new_v4().to_string();
    let created = client::create_game(&mut session, "tr-sue", "tr-ned", &key).await;
    let game_id = created.game_id.clone();
    let channel = gateway::channel(server.addr()).await;
    let mut sue = PlayerClient::new(channel.clone(), "tr-sue");
    let mut ned = PlayerClient::new(channel, "tr-ned");
    sue.confirm(context(&game_id, "sue-confirm", None))
        .await
        .expect("sue's Confirm");
    ned.confirm(context(&game_id, "ned-confirm", None))
        .await
        .expect("ned's Confirm");
    // Both players follow the game: the move's delivery to each stream belongs to its trace.
    let mut streams = Vec::new();
    for player in [&mut sue, &mut ned] {
        let mut stream = player
            .subscribe(&game_id, 1, false)
            .await
            .expect("Subscribe");
        loop {
            let item = gateway::next_item(&mut stream, "the stream before the move")
                .await
                .expect("a stream item")
                .expect("the stream goes on");
            if let Some(pb::subscribe_response::Item::Event(event)) = item.item
                && matches!(event.event, Some(pb::game_event::Event::PlayStarted(_)))
            {
                break;
            }
        }
        streams.push(stream);
    }
    let mover = match side_of(created.first_mover) {
        pb::Side::South => &mut sue,
        pb::Side::North => &mut ned,
        pb::Side::Unspecified => panic!("no first mover: {created:?}"),
    };
    let legal = mover.legal_moves(&game_id).await.expect("LegalMoves");
    let chosen = legal.moves.first().expect("a legal first move").clone();
    let played = mover
        .play(context(&game_id, "the-move", Some(legal.version)), chosen)
        .await
        .expect("Play");
    assert!(!played.events.is_empty(), "the move caused no events");

    // Collect spans until the move's whole path has arrived.
    let deadline = Instant::now() + DEADLINE;
    let mut spans: HashMap<String, ReceivedSpan> = HashMap::new();
    let found = loop {
        let play = spans.values().find(|s| s.name == PLAY).cloned();
        if let Some(play) = play {
            let of_trace = |name: &str| {
                spans
                    .values()
                    .find(|s| s.name == name && s.trace_id == play.trace_id)
                    .cloned()
            };
            let deliveries: Vec<ReceivedSpan> = spans
                .values()
                .filter(|s| s.name == DELIVER && s.trace_id == play.trace_id)
                .cloned()
                .collect();
            if let (Some(submit), Some(append), true) = (
                of_trace(SUBMIT_MOVE),
                of_trace(APPEND),
                deliveries.len() >= 2,
            ) {
                break Some((play, submit, append, deliveries));
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break None;
        }
        if let Some(span) = receiver.next(left).await {
            spans.insert(span.span_id.clone(), span);
        }
    };
    let names: Vec<(&str, &str)> = spans
        .values()
        .map(|s| (s.name.as_str(), s.trace_id.as_str()))
        .collect();
    let Some((play, submit, append, deliveries)) = found else {
        panic!(
            "within {DEADLINE:?} the receiver did not get {PLAY}, {SUBMIT_MOVE} and {APPEND} of \
             one trace; it got (name, trace): {names:?}\nserver stderr:\n{}",
            server.stderr()
        );
    };

    // One trace: Play (a root: the test sent no context) > SubmitMove > ... > store.append.
    assert_eq!(play.trace_id.len(), 32);
    assert_ne!(play.trace_id, "0".repeat(32));
    assert!(
        play.parent_span_id.is_empty(),
        "Play has a parent: {play:?}"
    );
    assert_eq!(submit.trace_id, play.trace_id);
    assert_eq!(append.trace_id, play.trace_id);
    let submit_chain = ancestors(&spans, &submit);
    assert_eq!(
        submit_chain.last().copied(),
        Some(PLAY),
        "SubmitMove does not lead up to Play: {submit_chain:?}"
    );
    // ... and back out: each subscriber's delivery of the move continues the same trace.
    for delivery in &deliveries {
        let chain = ancestors(&spans, delivery);
        assert!(
            chain.contains(&SUBMIT_MOVE) && chain.last().copied() == Some(PLAY),
            "a delivery does not lead up to SubmitMove and Play: {chain:?}"
        );
        assert_eq!(delivery.attribute("game_id"), Some(game_id.as_str()));
    }
    drop(streams);
    let append_chain = ancestors(&spans, &append);
    assert!(
        append_chain.contains(&SUBMIT_MOVE) && append_chain.last().copied() == Some(PLAY),
        "the append does not lead up to SubmitMove and Play: {append_chain:?}"
    );
    assert_eq!(
        submit.parent_span_id, play.span_id,
        "SubmitMove's parent is not the Play span (was the context sent in the metadata?)"
    );

    // The RPC spans say what was called; the store span which game and versions.
    for (span, service, method) in [
        (&play, "hiddenfront.v1.PlayerService", "Play"),
        (&submit, "hiddenfront.v1.SessionService", "SubmitMove"),
    ] {
        assert_eq!(span.attribute("rpc.system"), Some("grpc"), "{span:?}");
        assert_eq!(span.attribute("rpc.service"), Some(service), "{span:?}");
        assert_eq!(span.attribute("rpc.method"), Some(method), "{span:?}");
        assert_eq!(
            span.attribute("rpc.grpc.status_code"),
            Some("0"),
            "{span:?}"
        );
        assert_eq!(
            span.service, "hidden-front-e2e",
            "OTEL_SERVICE_NAME is not honoured"
        );
    }
    assert_eq!(append.attribute("game_id"), Some(game_id.as_str()));
    assert_eq!(
        append.attribute("expected_version"),
        Some(legal.version.to_string().as_str())
    );
    assert_eq!(
        append.attribute("version"),
        Some(played.version.to_string().as_str())
    );

    // No hidden rank anywhere: no attribute of any span or span event names pieces,
    // deployments, events' contents or snapshots, in its key or its value.
    for span in spans.values() {
        for (key, value) in span.attributes.iter().chain(&span.event_attributes) {
            let (key, value) = (key.to_lowercase(), value.to_lowercase());
            for word in FORBIDDEN_KEYS {
                assert!(
                    !key.contains(word),
                    "span {} has an attribute {key} = {value:?}",
                    span.name
                );
            }
            for word in FORBIDDEN_VALUES {
                assert!(
                    !value.contains(word),
                    "span {} carries {word:?} in {key} = {value:?}",
                    span.name
                );
            }
        }
    }
}
