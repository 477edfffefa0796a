//! The broker's management API (HTTP), for what AMQP does not tell a client: messages out
//! unacknowledged, the node's memory, the queue's publish and deliver counts, the broker's
//! version, and the list of connections (to close the run's own, as `rabbitmqctl
//! close_connection` does). The local and container providers enable the management
//! plugin on a port of their own; a broker named by URL is asked on port 15672 of its host,
//! with the URL's account.

use crate::backend::error::{BackendError, ErrorClass};
use reqwest::{Client, Url};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

/// The management API's port on a broker named by URL, unless the URL says another
/// (`?management_port=N`, a parameter the AMQP client leaves alone).
pub const DEFAULT_PORT: u16 = 15672;

/// The management API's port for a broker named by `amqp_url`: its `management_port`
/// parameter, else [`DEFAULT_PORT`]; the reason when the parameter is not a port.
pub fn management_port(amqp_url: &str) -> Result<u16, String> {
    let Ok(url) = Url::parse(amqp_url) else {
        return Ok(DEFAULT_PORT);
    };
    match url.query_pairs().find(|(k, _)| k == "management_port") {
        None => Ok(DEFAULT_PORT),
        Some((_, v)) => v.parse().ok().filter(|p| *p > 0).ok_or_else(|| {
            format!("management_port={v} is not a port (the management API's, 1-65535)")
        }),
    }
}

/// How long one request may take.
const ANSWER_WITHIN: Duration = Duration::from_secs(5);

/// The management API of one broker.
#[derive(Clone)]
pub struct Admin {
    client: Client,
    /// `http://host:port/api`.
    base: String,
    /// The virtual host, as the API's paths spell it (`%2F` for `/`).
    vhost: String,
    user: String,
    password: String,
}

fn decoded(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}

fn error(what: &str, e: impl std::fmt::Display) -> BackendError {
    BackendError::new(
        ErrorClass::Transient,
        format!("the management API ({what}): {e}"),
    )
}

impl Admin {
    /// The API on `port` of the host of `amqp_url`, with its account and virtual host;
    /// `None` when the URL has no host.
    pub fn at(amqp_url: &str, port: u16) -> Option<Admin> {
        let url = Url::parse(amqp_url).ok()?;
        let host = url.host_str()?;
        let vhost = match url.path().trim_start_matches('/') {
            "" => "%2F".to_string(),
            v => v.to_string(),
        };
        let client = Client::builder().timeout(ANSWER_WITHIN).build().ok()?;
        Some(Admin {
            client,
            base: format!("http://{host}:{port}/api"),
            vhost,
            user: decoded(url.username()),
            password: decoded(url.password().unwrap_or("")),
        })
    }

    /// Where the API is (no account), for messages.
    pub fn address(&self) -> &str {
        &self.base
    }

    /// Sends `request` with the account; the broker's answer, whatever its status.
    async fn send(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, BackendError> {
        request
            .basic_auth(&self.user, Some(&self.password))
            .send()
            .await
            .map_err(|e| self.failed(e))
    }

    fn failed(&self, e: reqwest::Error) -> BackendError {
        error(&self.base, e.without_url())
    }

    async fn get(&self, path: &str) -> Result<Value, BackendError> {
        let request = self.client.get(format!("{}/{path}", self.base));
        let response = self.send(request).await?;
        let response = response.error_for_status().map_err(|e| self.failed(e))?;
        response.json().await.map_err(|e| self.failed(e))
    }

    /// The broker's version (`RabbitMQ 3.10.8`).
    pub async fn version(&self) -> Result<String, BackendError> {
        let overview = self
            .get("overview?columns=product_name,product_version")
            .await?;
        Ok(format!(
            "{} {}",
            overview["product_name"].as_str().unwrap_or("RabbitMQ"),
            overview["product_version"].as_str().unwrap_or("")
        ))
    }

    /// A queue's figures: messages ready and unacknowledged, bytes of persistent messages,
    /// memory, and the counts since it was declared.
    pub async fn queue(&self, name: &str) -> Result<Value, BackendError> {
        let columns = "messages_ready,messages_unacknowledged,message_bytes_persistent,memory,\
                       message_stats.publish,message_stats.deliver_get,message_stats.ack,\
                       message_stats.redeliver";
        self.get(&format!("queues/{}/{name}?columns={columns}", self.vhost))
            .await
    }

    /// The figures of the node that serves the queue (the first, on a cluster).
    pub async fn node(&self) -> Result<Value, BackendError> {
        let nodes = self.get("nodes?columns=name,mem_used,disk_free").await?;
        Ok(nodes.get(0).cloned().unwrap_or(Value::Null))
    }

    /// The broker's names of the open connections whose client-given name starts with
    /// `prefix`, with the rest of that name. The client-given names come from the API's
    /// statistics, which list a connection only a few seconds after it opened (measured
    /// here: 3 to 5 s); which connections are open now comes from its list without
    /// statistics, so a connection closed since is not named.
    pub async fn connections(&self, prefix: &str) -> Result<Vec<(String, String)>, BackendError> {
        let open = self.get("connections?disable_stats=true").await?;
        let open: std::collections::HashSet<&str> = open
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["name"].as_str())
            .collect();
        let named = self
            .get("connections?columns=name,client_properties.connection_name")
            .await?;
        Ok(named
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| {
                let name = c["name"].as_str().filter(|n| open.contains(n))?;
                let given = c["client_properties"]["connection_name"].as_str()?;
                let rest = given.strip_prefix(prefix)?;
                Some((name.to_string(), rest.to_string()))
            })
            .collect())
    }

    /// Closes the connection the broker calls `name`, as `rabbitmqctl close_connection`;
    /// whether it was still open.
    pub async fn close_connection(&self, name: &str) -> Result<bool, BackendError> {
        let path: String =
            percent_encoding::utf8_percent_encode(name, percent_encoding::NON_ALPHANUMERIC)
                .collect();
        let request = self
            .client
            .delete(format!("{}/connections/{path}", self.base))
            .header("X-Reason", "dbq-bench kill_backends");
        let response = self.send(request).await?;
        if response.status() == reqwest::StatusCode::NOT_FOUND {
            return Ok(false);
        }
        response.error_for_status().map_err(|e| self.failed(e))?;
        Ok(true)
    }
}

/// An integer at `path` (`message_stats.publish`) of a JSON object, 0 when absent (the
/// broker leaves out counts of what has not happened yet).
pub fn figure(value: &Value, path: &str) -> i64 {
    path.split('.')
        .fold(value, |v, key| &v[key])
        .as_i64()
        .unwrap_or(0)
}

/// The broker's own figures for the sampler, named as `db_stats.csv` shows them (names
/// ending in `_total` count since the queue was declared).
pub fn figures(jobs: &Value, dead: &Value, node: &Value) -> BTreeMap<String, i64> {
    [
        ("ready", figure(jobs, "messages_ready")),
        ("unacked", figure(jobs, "messages_unacknowledged")),
        ("dead_letters", figure(dead, "messages_ready")),
        ("persistent_bytes", figure(jobs, "message_bytes_persistent")),
        ("queue_memory_bytes", figure(jobs, "memory")),
        ("node_memory_bytes", figure(node, "mem_used")),
        ("published_total", figure(jobs, "message_stats.publish")),
        ("delivered_total", figure(jobs, "message_stats.deliver_get")),
        ("acked_total", figure(jobs, "message_stats.ack")),
        ("redelivered_total", figure(jobs, "message_stats.redeliver")),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_is_found_beside_the_amqp_url_with_its_account() {
        let a = Admin::at("amqp://gu%40est:p%2Fw@broker.example:5673/jobs", 15672).unwrap();
        assert_eq!(a.address(), "http://broker.example:15672/api");
        assert_eq!((a.user.as_str(), a.password.as_str()), ("gu@est", "p/w"));
        assert_eq!(a.vhost, "jobs");
        let a = Admin::at("amqp://guest:guest@127.0.0.1:5672/%2f", 1).unwrap();
        assert_eq!(a.vhost, "%2f");
        assert_eq!(Admin::at("amqp://h", 1).unwrap().vhost, "%2F");
    }

    #[test]
    fn the_url_may_name_the_apis_port() {
        assert_eq!(management_port("amqp://h:5672/%2f"), Ok(DEFAULT_PORT));
        assert_eq!(
            management_port("amqp://h:5672/%2f?management_port=15999"),
            Ok(15999)
        );
        let e = management_port("amqp://h/%2f?heartbeat=5&management_port=x").unwrap_err();
        assert!(e.contains("management_port=x"), "{e}");
    }

    #[test]
    fn missing_counts_are_zero() {
        let jobs = serde_json::json!({"messages_ready": 3, "message_stats": {"publish": 9}});
        let f = figures(&jobs, &Value::Null, &Value::Null);
        assert_eq!(f["ready"], 3);
        assert_eq!(f["published_total"], 9);
        assert_eq!(f["acked_total"], 0);
        assert_eq!(f["dead_letters"], 0);
    }
}
