//! Label sets the encoder writes, rendered once per scrape.

use prometheus_client::encoding::{EncodeLabelSet, LabelSetEncoder};

/// A flow's `cca` and `flow` labels, rendered once per scrape as
/// `cca="fairtt",flow="123"` and written with one write per sample.
///
/// At 10k flows the per-flow families are ~180k samples, and encoding two
/// labels pair by pair (five writes each) was a quarter of the scrape. The
/// text encoder writes `{`, then whatever the label set writes, then `}`; the
/// rendered text goes through the first label's key writer, which passes
/// text through unchanged. The values are label-safe by construction (CCA
/// names and decimal ids), so nothing needs escaping.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FlowLabels(String);

impl FlowLabels {
    pub fn new(cca: &str, flow: std::fmt::Arguments) -> Self {
        use std::fmt::Write;
        let mut s = String::with_capacity(32);
        let _ = write!(s, "cca=\"{cca}\",flow=\"{flow}\"");
        FlowLabels(s)
    }

    /// These labels plus more, given as `,key="value"...` (label-safe).
    pub fn with(&self, more: std::fmt::Arguments) -> Self {
        use std::fmt::Write;
        let mut s = self.0.clone();
        let _ = s.write_fmt(more);
        FlowLabels(s)
    }
}

impl EncodeLabelSet for FlowLabels {
    fn encode(&self, mut encoder: LabelSetEncoder) -> Result<(), std::fmt::Error> {
        use std::fmt::Write;
        encoder
            .encode_label()
            .encode_label_key()?
            .write_str(&self.0)
    }
}

impl EncodeLabelSet for &FlowLabels {
    fn encode(&self, encoder: LabelSetEncoder) -> Result<(), std::fmt::Error> {
        (*self).encode(encoder)
    }
}
