//! The congestion controls this build carries.

use std::fmt;
use std::str::FromStr;

use crate::abi;
use crate::error::Error;

/// A congestion control shipped by rttfair. The kernel name is what sockets
/// select (`setsockopt(TCP_CONGESTION)`, `iperf3 -C`, sysctl).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Cca {
    /// BBR v1, the baseline built on the shared core.
    Bbr1,
    /// FaiRTT ("FaiRTT: An Empirical Approach for Enhanced RTT Fairness and
    /// Bottleneck Throughput in BBR"): RTT-dependent BDP reduction in ProbeBW.
    Fairtt,
    /// Ad-BBR ("Ad-BBR: Enhancing Round-Trip Time Fairness and Transmission
    /// Stability in TCP-BBR"): nRTT, RTT-ratio pacing regulation, adaptive
    /// ProbeRTT.
    Adbbr,
    /// qfair, the project's own: a fixed backlog per flow, so equal rates
    /// whatever the RTT (docs/algorithms.md, "qfair").
    Qfair,
    /// The kernel's own bbr, called through kfuncs and exported like the
    /// others: the native reference in every table.
    #[serde(rename = "bbr_native")]
    BbrNative,
    /// BBR v3 (google/bbr v3, IETF draft-ietf-ccwg-bbr) on a stock kernel:
    /// loss/ECN-bounded operating range, the baseline v3 users ask for
    /// (docs/algorithms.md, "bbr3").
    Bbr3,
}

impl Cca {
    /// Every CCA of this build, in a stable order.
    pub const ALL: [Cca; 6] = [
        Cca::Bbr1,
        Cca::Fairtt,
        Cca::Adbbr,
        Cca::Qfair,
        Cca::BbrNative,
        Cca::Bbr3,
    ];

    /// The name registered with the kernel.
    pub fn name(self) -> &'static str {
        match self {
            Cca::Bbr1 => "bbr1",
            Cca::Fairtt => "fairtt",
            Cca::Adbbr => "adbbr",
            Cca::Qfair => "qfair",
            Cca::BbrNative => "bbr_native",
            Cca::Bbr3 => "bbr3",
        }
    }

    /// The id used in the BPF maps (`enum rttfair_cca_id`).
    pub fn abi_id(self) -> u32 {
        match self {
            Cca::Bbr1 => abi::CCA_BBR1,
            Cca::Fairtt => abi::CCA_FAIRTT,
            Cca::Adbbr => abi::CCA_ADBBR,
            Cca::Qfair => abi::CCA_QFAIR,
            Cca::BbrNative => abi::CCA_BBR_NATIVE,
            Cca::Bbr3 => abi::CCA_BBR3,
        }
        .into()
    }

    /// The inverse of [`Cca::abi_id`].
    pub(crate) fn from_abi_id(id: u32) -> Option<Cca> {
        Cca::ALL.into_iter().find(|c| c.abi_id() == id)
    }

    /// Name of the `.struct_ops.link` map in the object.
    pub(crate) fn ops_map(self) -> String {
        format!("{}_ops", self.name())
    }

    /// "bbr1, fairtt, adbbr, qfair, bbr_native, bbr3", for error messages.
    pub fn valid_names() -> String {
        Cca::ALL.map(Cca::name).join(", ")
    }
}

impl fmt::Display for Cca {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Cca {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Cca::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| Error::UnknownCca {
                name: s.to_string(),
                valid: Cca::valid_names(),
            })
    }
}
