//! A TCP listener without client certificates serves the read-only calls and nothing else,
//! checked for every method the API's descriptor declares (not a hand-kept list of the
//! mutating ones): each call on `service::access::READ_ONLY` is answered, every other one
//! is PERMISSION_DENIED, and so is a method added to the API later that nobody listed.
//! In-process on a fake host, over real TLS.

#![allow(clippy::unwrap_used, reason = "test fixture")]

mod support;

use bytes::{Buf as _, BufMut as _};
use prost::Message as _;
use support::Running;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};

/// Messages as their bytes: the test calls methods by name, whatever their types.
#[derive(Debug, Clone, Copy, Default)]
struct Raw;

impl Codec for Raw {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = Raw;
    type Decoder = Raw;

    fn encoder(&mut self) -> Raw {
        Raw
    }

    fn decoder(&mut self) -> Raw {
        Raw
    }
}

impl Encoder for Raw {
    type Item = Vec<u8>;
    type Error = tonic::Status;

    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), tonic::Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for Raw {
    type Item = Vec<u8>;
    type Error = tonic::Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, tonic::Status> {
        Ok(Some(src.copy_to_bytes(src.remaining()).to_vec()))
    }
}

/// A method as the descriptor declares it.
#[derive(Debug, Clone)]
struct Method {
    path: String,
    client_streaming: bool,
    server_streaming: bool,
}

/// Every method of every service the daemon serves, from their descriptor sets: placed.v1,
/// health, and both reflection versions.
fn methods() -> Vec<Method> {
    let mut out = Vec::new();
    for set in [
        placed_proto::FILE_DESCRIPTOR_SET,
        tonic_health::pb::FILE_DESCRIPTOR_SET,
        tonic_reflection::pb::v1::FILE_DESCRIPTOR_SET,
        tonic_reflection::pb::v1alpha::FILE_DESCRIPTOR_SET,
    ] {
        methods_of(set, &mut out);
    }
    out
}

fn methods_of(encoded: &[u8], out: &mut Vec<Method>) {
    let set = prost_types::FileDescriptorSet::decode(encoded).unwrap();
    for file in &set.file {
        for service in &file.service {
            for m in &service.method {
                out.push(Method {
                    path: format!("/{}.{}/{}", file.package(), service.name(), m.name()),
                    client_streaming: m.client_streaming(),
                    server_streaming: m.server_streaming(),
                });
            }
        }
    }
}

/// Calls `m` with an empty message (every field at its default); the status it ends with,
/// or None when it was answered.
async fn call(channel: &tonic::transport::Channel, m: &Method) -> Option<tonic::Status> {
    let mut grpc = tonic::client::Grpc::new(channel.clone());
    grpc.ready().await.unwrap();
    let path = http::uri::PathAndQuery::try_from(m.path.as_str()).unwrap();
    let one = || tokio_stream::iter([Vec::new()]);
    let result = match (m.client_streaming, m.server_streaming) {
        (false, false) => grpc
            .unary(tonic::Request::new(Vec::new()), path, Raw)
            .await
            .map(drop),
        (false, true) => grpc
            .server_streaming(tonic::Request::new(Vec::new()), path, Raw)
            .await
            .map(drop),
        (true, false) => grpc
            .client_streaming(tonic::Request::new(one()), path, Raw)
            .await
            .map(drop),
        (true, true) => grpc
            .streaming(tonic::Request::new(one()), path, Raw)
            .await
            .map(drop),
    };
    result.err()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_client_certificates_tcp_serves_exactly_the_read_only_list() {
    let dir = tempfile::tempdir().unwrap();
    let p = support::pki::pki(dir.path());
    let mut config = support::config(dir.path());
    support::with_tls(&mut config, &p, false);
    let addr = config.grpc.tcp.unwrap();
    let fake = support::host();
    let d = Running::on(config, &fake).await;
    let remote = support::tls_channel(addr, &p, false).await.unwrap();
    let local = d.channel().await;
    let status = placed_proto::v1::placed_service_client::PlacedServiceClient::new(local.clone());
    support::until_async("the daemon serves", || {
        let mut status = status.clone();
        async move {
            status
                .get_status(placed_proto::v1::GetStatusRequest {})
                .await
                .is_ok()
        }
    })
    .await;

    let all = methods();
    assert!(
        all.iter()
            .filter(|m| m.path.starts_with("/placed.v1.PlacedService/"))
            .count()
            >= 12,
        "{all:?}"
    );
    // The list names no method the daemon does not have (a renamed call would be denied).
    for listed in placed::service::access::READ_ONLY {
        assert!(
            all.iter().any(|m| m.path == *listed),
            "{listed} is on the read-only list but no service declares it"
        );
    }
    let mut denied = Vec::new();
    for m in &all {
        let read_only = placed::service::access::READ_ONLY.contains(&m.path.as_str());
        match call(&remote, m).await {
            Some(st) if st.code() == tonic::Code::PermissionDenied => {
                assert!(
                    !read_only,
                    "{}: a read-only call was denied: {st:?}",
                    m.path
                );
                assert!(
                    st.message().contains("grpc.tls.client_ca is unset"),
                    "{}: {st:?}",
                    m.path
                );
                denied.push(m.path.rsplit('/').next().unwrap().to_owned());
            }
            other => assert!(
                read_only,
                "{}: served on a read-only listener: {other:?}",
                m.path
            ),
        }
    }
    denied.sort();
    eprintln!("denied on read-only TCP: {denied:?}");
    assert!(denied.contains(&"Manage".to_owned()), "{denied:?}");

    // A method added later, listed nowhere: denied by name before routing on TCP, while the
    // Unix socket routes it (and has no such handler yet).
    let later = Method {
        path: "/placed.v1.PlacedService/AddedLater".into(),
        client_streaming: false,
        server_streaming: false,
    };
    let st = call(&remote, &later).await.unwrap();
    assert_eq!(st.code(), tonic::Code::PermissionDenied, "{st:?}");
    assert!(
        st.message()
            .starts_with("AddedLater is not a read-only call"),
        "{st:?}"
    );
    let st = call(&local, &later).await.unwrap();
    assert_eq!(st.code(), tonic::Code::Unimplemented, "{st:?}");
    drop((remote, local));
    d.stop().await.unwrap();
}
