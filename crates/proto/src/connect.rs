//! `hiddenfront.v1.ConnectResponse` as Rust holds it: each `ServerMessage` already encoded.
//!
//! Why by hand: a game's event is the same for every connection of one audience (a seat, or the
//! spectators), so the gateway encodes it once and hands the same bytes to each of them; and a
//! connection writes every message that is ready in one response. A `repeated ServerMessage`
//! field and a `repeated bytes` field are the same on the wire (field 1, length-delimited), so
//! this type is the protos' `ConnectResponse` for every client, whatever it was generated from.
//! Readers decode the messages with [`ConnectResponse::decode_messages`].

use crate::v1::ServerMessage;
use bytes::Bytes;
use prost::Message;

/// `hiddenfront.v1.ConnectResponse`: the server messages that were ready together, in order,
/// each encoded.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct ConnectResponse {
    /// Each an encoded `hiddenfront.v1.ServerMessage`.
    #[prost(bytes = "bytes", repeated, tag = "1")]
    pub messages: Vec<Bytes>,
}

impl ConnectResponse {
    /// A response holding `messages`, encoding each.
    pub fn of(messages: &[ServerMessage]) -> ConnectResponse {
        ConnectResponse {
            messages: messages
                .iter()
                .map(|message| Bytes::from(message.encode_to_vec()))
                .collect(),
        }
    }

    /// Its messages, decoded.
    pub fn decode_messages(&self) -> Result<Vec<ServerMessage>, prost::DecodeError> {
        self.messages
            .iter()
            .map(|bytes| ServerMessage::decode(bytes.as_ref()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v1 as pb;

    /// The hand-written form and a `repeated ServerMessage` field are the same bytes, both ways.
    #[test]
    fn encoded_messages_read_as_the_protos_repeated_message_field() {
        let messages = vec![
            ServerMessage {
                item: Some(pb::server_message::Item::Answer(pb::Answer {
                    request_id: 7,
                    response: Some(pb::answer::Response::Followed(pb::Followed {
                        game_id: "g".into(),
                    })),
                })),
            },
            ServerMessage {
                item: Some(pb::server_message::Item::Event(pb::GameEvent {
                    game_id: "g".into(),
                    seq: 3,
                    event: None,
                })),
            },
        ];
        let response = ConnectResponse::of(&messages);
        assert_eq!(response.decode_messages().unwrap(), messages);
        // The same bytes as a message whose field 1 is `repeated ServerMessage`.
        #[derive(Clone, PartialEq, prost::Message)]
        struct Generated {
            #[prost(message, repeated, tag = "1")]
            messages: Vec<ServerMessage>,
        }
        let generated = Generated {
            messages: messages.clone(),
        };
        assert_eq!(response.encode_to_vec(), generated.encode_to_vec());
        assert_eq!(
            ConnectResponse::decode(generated.encode_to_vec().as_slice()).unwrap(),
            response
        );
    }
}
