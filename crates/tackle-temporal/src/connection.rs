//! Connecting to the Temporal frontend: [`connect`] by address, [`connect_with`] with
//! the caller's options (TLS, an API key), and [`TemporalError`], what goes wrong
//! connecting or running a worker.

use std::str::FromStr;

use temporalio_client::{Client, ClientOptions, Connection, ConnectionOptions, Url};

/// What went wrong connecting to Temporal or running a worker.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TemporalError {
    /// The address is not a URL.
    #[error("`{address}` is not a Temporal address: {message}")]
    Address {
        /// The address given.
        address: String,
        /// Why not.
        message: String,
    },
    /// The frontend could not be reached, or refused the client.
    #[error("could not connect to Temporal at {address}: {message}")]
    Connect {
        /// The address.
        address: String,
        /// What failed.
        message: String,
    },
    /// The worker could not be built or stopped with an error.
    #[error("the worker failed: {0}")]
    Worker(String),
}

/// Connects a client to the Temporal frontend at `address`
/// (`http://127.0.0.1:7233`) in `namespace`.
pub async fn connect(address: &str, namespace: &str) -> Result<Client, TemporalError> {
    let url = Url::from_str(address).map_err(|e| TemporalError::Address {
        address: address.to_owned(),
        message: e.to_string(),
    })?;
    connect_with(ConnectionOptions::new(url).build(), namespace).await
}

/// Connects a client with `options` in `namespace`: a cluster beyond localhost, with
/// TLS (`tls_options`, with the `tls` feature) and an API key (`api_key`; set
/// `tls_options` too, and an `https://` target, as Temporal Cloud wants). Give the
/// client to [`AgentWorker::with_client`].
///
/// ```no_run
/// use tackle_temporal::client::{ConnectionOptions, Url};
///
/// # async fn cloud() -> Result<(), Box<dyn std::error::Error>> {
/// let options = ConnectionOptions::new(Url::parse("https://my-ns.tmprl.cloud:7233")?)
///     .api_key(std::env::var("TEMPORAL_API_KEY")?)
///     .build();
/// let client = tackle_temporal::connect_with(options, "my-ns").await?;
/// # let _ = client; Ok(()) }
/// ```
///
/// [`AgentWorker::with_client`]: crate::AgentWorker::with_client
pub async fn connect_with(
    options: ConnectionOptions,
    namespace: &str,
) -> Result<Client, TemporalError> {
    let address = options.target.to_string();
    let connection = Connection::connect(options)
        .await
        .map_err(|e| TemporalError::Connect {
            address: address.clone(),
            message: e.to_string(),
        })?;
    Client::new(connection, ClientOptions::new(namespace).build()).map_err(|e| {
        TemporalError::Connect {
            address,
            message: e.to_string(),
        }
    })
}
