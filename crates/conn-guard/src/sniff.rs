//! When a connection's handshake is complete, read from the bytes it sent: the HTTP/2 preface
//! and the SETTINGS frame that must follow it, or an HTTP/1 request head (up to its blank line).
//! Only the first bytes are looked at; after that the sniffer is done and costs nothing.

/// The HTTP/2 client connection preface (RFC 9113, section 3.4).
const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// An HTTP/2 frame header's length.
const FRAME_HEADER: usize = 9;
/// The SETTINGS frame's type.
const SETTINGS: u8 = 0x4;

/// Where the handshake is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Sniff {
    /// Matching the HTTP/2 preface: this many bytes matched so far.
    Preface(usize),
    /// After the preface: the first frame's header, this much of it read.
    FrameHeader([u8; FRAME_HEADER], usize),
    /// The SETTINGS frame's payload: this many bytes still to come.
    FramePayload(usize),
    /// An HTTP/1 request head: the last bytes seen, for its blank line.
    Head(u32),
    /// The handshake is complete (or the bytes are not HTTP, which the server will refuse).
    Done,
}

impl Sniff {
    pub(crate) fn new() -> Sniff {
        Sniff::Preface(0)
    }

    pub(crate) fn is_done(&self) -> bool {
        matches!(self, Sniff::Done)
    }

    /// Takes in the next bytes the peer sent.
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        while !rest.is_empty() && !self.is_done() {
            match self {
                Sniff::Preface(matched) => {
                    let byte = rest[0];
                    if byte == PREFACE[*matched] {
                        *matched += 1;
                        rest = &rest[1..];
                        if *matched == PREFACE.len() {
                            *self = Sniff::FrameHeader([0; FRAME_HEADER], 0);
                        }
                    } else {
                        // Not HTTP/2: an HTTP/1 head, which began with the bytes matched so far.
                        let matched = *matched;
                        *self = Sniff::Head(0);
                        self.feed_head(&PREFACE[..matched]);
                    }
                }
                Sniff::FrameHeader(header, have) => {
                    let take = (FRAME_HEADER - *have).min(rest.len());
                    header[*have..*have + take].copy_from_slice(&rest[..take]);
                    *have += take;
                    rest = &rest[take..];
                    if *have == FRAME_HEADER {
                        let length = u32::from_be_bytes([0, header[0], header[1], header[2]]);
                        *self = if header[3] != SETTINGS || length == 0 {
                            // A first frame other than SETTINGS is the server's to refuse.
                            Sniff::Done
                        } else {
                            Sniff::FramePayload(length as usize)
                        };
                    }
                }
                Sniff::FramePayload(remaining) => {
                    let take = (*remaining).min(rest.len());
                    *remaining -= take;
                    rest = &rest[take..];
                    if *remaining == 0 {
                        *self = Sniff::Done;
                    }
                }
                Sniff::Head(_) => {
                    self.feed_head(rest);
                    rest = &[];
                }
                Sniff::Done => {}
            }
        }
    }

    fn feed_head(&mut self, bytes: &[u8]) {
        let Sniff::Head(last) = self else { return };
        let mut window = *last;
        for &byte in bytes {
            window = (window << 8) | u32::from(byte);
            // The blank line that ends a head: CRLF CRLF, or a bare LF LF (which parsers accept).
            if window == u32::from_be_bytes(*b"\r\n\r\n") || window & 0xffff == 0x0a0a {
                *self = Sniff::Done;
                return;
            }
        }
        *last = window;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fed_one_byte_at_a_time(bytes: &[u8]) -> Sniff {
        let mut sniff = Sniff::new();
        for byte in bytes {
            sniff.feed(std::slice::from_ref(byte));
        }
        sniff
    }

    fn settings(payload: usize) -> Vec<u8> {
        let mut frame = PREFACE.to_vec();
        let len = (payload as u32).to_be_bytes();
        frame.extend_from_slice(&[len[1], len[2], len[3], SETTINGS, 0, 0, 0, 0, 0]);
        frame.extend(std::iter::repeat_n(0u8, payload));
        frame
    }

    #[test]
    fn an_http2_handshake_completes_with_its_settings_frame() {
        let whole = settings(12);
        for cut in 0..whole.len() {
            let mut sniff = Sniff::new();
            sniff.feed(&whole[..cut]);
            assert!(
                !sniff.is_done(),
                "done after {cut} of {} bytes",
                whole.len()
            );
            sniff.feed(&whole[cut..]);
            assert!(
                sniff.is_done(),
                "not done after all bytes, fed {cut} then the rest"
            );
        }
        assert!(fed_one_byte_at_a_time(&whole).is_done());
        assert!(!fed_one_byte_at_a_time(&whole[..whole.len() - 1]).is_done());
        // The preface alone is not the handshake.
        assert!(!fed_one_byte_at_a_time(PREFACE).is_done());
        // An empty SETTINGS frame is a whole one.
        assert!(fed_one_byte_at_a_time(&settings(0)).is_done());
    }

    #[test]
    fn an_http1_head_completes_at_its_blank_line() {
        let head = b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n";
        assert!(fed_one_byte_at_a_time(head).is_done());
        assert!(!fed_one_byte_at_a_time(&head[..head.len() - 1]).is_done());
        // A head that starts like the preface ("PRI", "P" of POST) is still a head.
        let post = b"POST /x HTTP/1.1\r\ncontent-length: 0\r\n\r\n";
        assert!(fed_one_byte_at_a_time(post).is_done());
        assert!(!fed_one_byte_at_a_time(&post[..post.len() - 2]).is_done());
        let mut sniff = Sniff::new();
        sniff.feed(b"PRI * HTTP/1.1\r\n\r");
        assert!(!sniff.is_done());
        sniff.feed(b"\n");
        // "PRI * HTTP/1.1\r\n\r\n": it matched the preface for 12 bytes, then ended its head.
        assert!(sniff.is_done());
        assert!(fed_one_byte_at_a_time(b"GET / HTTP/1.0\n\n").is_done());
        // Bytes that never end a head never complete the handshake.
        assert!(!fed_one_byte_at_a_time(&[b'a'; 4096]).is_done());
    }
}
