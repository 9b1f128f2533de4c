//! What a listener's callers may call: everything, or only the calls on one explicit
//! read-only list, checked once by method path in front of every service.
//!
//! A TCP listener without client certificates does not know who connects, so it serves only
//! calls that change nothing. This used to be a check each mutating handler had to remember
//! to call: a handler added later without it would have moved containers, and run
//! commands through a command metric, for anyone who reached the port. Now the layer in
//! front of every service (`super::front`) lets through only the paths in [`READ_ONLY`]
//! and answers PERMISSION_DENIED to the rest, before routing, so that a method added to
//! the API later is denied there until it is listed.

/// What a listener's callers may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Every call: the Unix socket (its mode and group decide who connects), and TCP with
    /// client certificates (`grpc.tls.client_ca`).
    Full,
    /// Only the calls in [`READ_ONLY`]: TCP without client authentication, where any client
    /// that reaches the port would otherwise move containers and, through a command
    /// metric, run programs as the daemon's user.
    ReadOnly,
}

/// The calls that change nothing, by path: placed's reads (`Predict` is not one: it moves
/// the container to measure it), health and reflection.
pub const READ_ONLY: &[&str] = &[
    "/placed.v1.PlacedService/GetMachine",
    "/placed.v1.PlacedService/ListPlacements",
    "/placed.v1.PlacedService/ListContainers",
    "/placed.v1.PlacedService/GetContainer",
    "/placed.v1.PlacedService/Recommend",
    "/placed.v1.PlacedService/Watch",
    "/placed.v1.PlacedService/GetStatus",
    "/placed.v1.PlacedService/ListReservations",
    "/placed.v1.PlacedService/GetCapacity",
    "/grpc.health.v1.Health/Check",
    "/grpc.health.v1.Health/Watch",
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
];

impl Access {
    /// Of a TCP listener: full when clients must present a certificate.
    pub fn of_tcp(client_certificates: bool) -> Self {
        if client_certificates {
            Self::Full
        } else {
            Self::ReadOnly
        }
    }

    /// Whether a call to `path` (`/package.Service/Method`) is served.
    pub fn allows(self, path: &str) -> bool {
        match self {
            Self::Full => true,
            Self::ReadOnly => READ_ONLY.contains(&path),
        }
    }
}

/// The answer to a call the listener does not serve.
pub fn denied(path: &str) -> tonic::Status {
    let method = path.rsplit('/').next().unwrap_or(path);
    super::status::Refusal::new(tonic::Code::PermissionDenied, "READ_ONLY_LISTENER", format!(
        "{} is not a read-only call, and this TCP listener serves only read-only calls: it has no client authentication (grpc.tls.client_ca is unset); set grpc.tls.client_ca to the CA of the orchestrators' certificates, or call over the Unix socket",
        placed_core::text::clip(method, 100)
    ))
    .status()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_full_listener_serves_anything_and_the_read_only_one_its_list_alone() {
        for path in READ_ONLY {
            assert!(Access::ReadOnly.allows(path), "{path}");
        }
        for path in [
            "/placed.v1.PlacedService/Manage",
            "/placed.v1.PlacedService/Predict",
            "/placed.v1.PlacedService/NotYetWritten",
            "/placed.v1.PlacedService/GetStatus/",
            "/placed.v1.PlacedService/getstatus",
            "",
        ] {
            assert!(!Access::ReadOnly.allows(path), "{path}");
            assert!(Access::Full.allows(path), "{path}");
        }
        let st = denied("/placed.v1.PlacedService/Manage");
        assert_eq!(st.code(), tonic::Code::PermissionDenied);
        assert!(
            st.message().starts_with("Manage is not a read-only call"),
            "{st:?}"
        );
        assert!(
            st.message().contains("grpc.tls.client_ca is unset"),
            "{st:?}"
        );
    }
}
