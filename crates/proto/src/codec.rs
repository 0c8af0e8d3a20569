//! The codec of every generated service and client: prost's, except that a message that does
//! not decode is the sender's mistake, answered `INVALID_ARGUMENT` with reason
//! `MALFORMED_REQUEST`, not tonic's default `INTERNAL` (which reads as a server fault and invites
//! pointless retries).

use hidden_front_api_error::{ApiError, Reason};
use prost::Message;
use std::marker::PhantomData;
use tonic::Status;
use tonic::codec::{BufferSettings, Codec, DecodeBuf, Decoder};
use tonic_prost::{ProstCodec, ProstDecoder, ProstEncoder};

/// [`ProstCodec`] with decode failures answered as the caller's mistake.
#[derive(Debug, Clone)]
pub struct ProtoCodec<T, U> {
    _types: PhantomData<(T, U)>,
}

impl<T, U> Default for ProtoCodec<T, U> {
    fn default() -> Self {
        ProtoCodec {
            _types: PhantomData,
        }
    }
}

impl<T, U> Codec for ProtoCodec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = ProtoDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstEncoder::default()
    }

    fn decoder(&mut self) -> Self::Decoder {
        ProtoDecoder {
            inner: ProstCodec::<T, U>::raw_decoder(BufferSettings::default()),
        }
    }
}

/// Decodes `U`, refusing undecodable bytes as [`Reason::MalformedRequest`].
#[derive(Debug, Clone)]
pub struct ProtoDecoder<U> {
    inner: ProstDecoder<U>,
}

impl<U: Message + Default> Decoder for ProtoDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        self.inner.decode(buf).map_err(|status| {
            // prost's text names the field path that failed ("invalid wire type ... : Move.from")
            // and never echoes the bytes.
            ApiError::new(
                Reason::MalformedRequest,
                format!(
                    "the message is not a valid {}: {}",
                    short_type_name::<U>(),
                    status.message()
                ),
            )
            .to_status()
        })
    }

    fn buffer_settings(&self) -> BufferSettings {
        self.inner.buffer_settings()
    }
}

/// `U`'s message name without its Rust module path.
fn short_type_name<U>() -> &'static str {
    let name = std::any::type_name::<U>();
    name.rsplit("::").next().unwrap_or(name)
}
