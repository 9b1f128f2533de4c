//! Pages of the list calls. Page tokens are opaque to clients and signed with a key made
//! when the daemon starts, so that a token this daemon never issued (made up, mangled, or
//! from before a restart) is INVALID_ARGUMENT instead of a silent start from the top.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::hmac;
use tonic::Status;

/// Entries per page when the request leaves page_size at 0.
pub const DEFAULT_PAGE_SIZE: usize = 100;
/// Larger page sizes are served as this many (AIP-158: coerce, do not refuse).
pub const MAX_PAGE_SIZE: usize = 1000;
/// Bytes of an HMAC-SHA256 tag.
const TAG: usize = 32;

/// The number of entries to return for a request's `page_size`.
pub fn page_size(requested: i32) -> Result<usize, Status> {
    match usize::try_from(requested) {
        Err(_) => Err(super::status::bad_request(
            "page_size",
            format!(
                "page_size = {requested} is negative: give 0 for the default ({DEFAULT_PAGE_SIZE}) or up to {MAX_PAGE_SIZE}"
            ),
        )),
        Ok(0) => Ok(DEFAULT_PAGE_SIZE),
        Ok(n) => Ok(n.min(MAX_PAGE_SIZE)),
    }
}

/// Issues and checks page tokens.
#[derive(Debug)]
pub struct Pager {
    key: hmac::Key,
}

impl Pager {
    /// A pager with a fresh random key.
    pub fn new() -> Result<Self, ring::error::Unspecified> {
        let key = hmac::Key::generate(hmac::HMAC_SHA256, &ring::rand::SystemRandom::new())?;
        Ok(Self { key })
    }

    /// What is signed: the list's name and a separator it cannot contain before the
    /// position, so that a token for one list (or for another vcpus) never opens another.
    fn message(list: &str, position: &[u8]) -> Vec<u8> {
        [list.as_bytes(), &[0], position].concat()
    }

    /// A token that resumes `list` after `position` (the last key or offset served).
    pub fn token(&self, list: &str, position: &str) -> String {
        let mut raw = position.as_bytes().to_vec();
        raw.extend_from_slice(
            hmac::sign(&self.key, &Self::message(list, position.as_bytes())).as_ref(),
        );
        URL_SAFE_NO_PAD.encode(raw)
    }

    /// The position a token resumes `list` after; INVALID_ARGUMENT for any token this
    /// pager did not issue for `list`.
    pub fn open(&self, list: &str, token: &str) -> Result<String, Status> {
        let refused = || {
            super::status::bad_request(
                "page_token",
                format!(
                    "page_token {:?} was not issued by this daemon for this listing (tokens do not survive a restart, and belong to one request's parameters): list again without a page_token",
                    token.chars().take(40).collect::<String>()
                ),
            )
        };
        let raw = URL_SAFE_NO_PAD.decode(token).map_err(|_| refused())?;
        let split = raw.len().checked_sub(TAG).ok_or_else(refused)?;
        let (position, tag) = raw.split_at(split);
        // In constant time: a tag is a secret until it is issued.
        hmac::verify(&self.key, &Self::message(list, position), tag).map_err(|_| refused())?;
        String::from_utf8(position.to_vec()).map_err(|_| refused())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issued_tokens_open_and_others_are_refused() {
        let pager = Pager::new().unwrap();
        let t = pager.token("containers", "docker/abc");
        assert_eq!(pager.open("containers", &t).unwrap(), "docker/abc");
        // Another list, another daemon run, a mangled or made-up token: refused.
        pager.open("placements/4", &t).unwrap_err();
        Pager::new().unwrap().open("containers", &t).unwrap_err();
        let mut mangled = t.clone().into_bytes();
        mangled[0] = if mangled[0] == b'A' { b'B' } else { b'A' };
        let mangled = String::from_utf8(mangled).unwrap();
        for bad in [mangled.as_str(), "", "not-a-token", "AAAA", "%%%"] {
            let e = pager.open("containers", bad).unwrap_err();
            assert_eq!(e.code(), tonic::Code::InvalidArgument, "{bad:?}");
            assert!(e.message().contains("not issued by this daemon"), "{e:?}");
        }
    }

    #[test]
    fn page_sizes_default_coerce_and_refuse_negatives() {
        assert_eq!(page_size(0).unwrap(), DEFAULT_PAGE_SIZE);
        assert_eq!(page_size(7).unwrap(), 7);
        assert_eq!(page_size(i32::MAX).unwrap(), MAX_PAGE_SIZE);
        assert_eq!(
            page_size(-1).unwrap_err().code(),
            tonic::Code::InvalidArgument
        );
    }
}
