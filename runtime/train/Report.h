//===- Report.h - the JSON report of a training run -------------*- C++ -*-===//

#ifndef ZEROSBP_RUNTIME_TRAIN_REPORT_H
#define ZEROSBP_RUNTIME_TRAIN_REPORT_H

#include "runtime/train/Trainer.h"

#include <string>

namespace zerosbp::runtime {

/// `losses` (one per step), `step_ms`, `phase_ms` (mean per step over
/// ranks, the first step left out when there are more), `peak_bytes` (per
/// rank: total, model states and by role) beside `planned_bytes`,
/// `comm_bytes` (per step and kind, per rank), tokens per second.
/// A size line of /proc/self/status ("VmRSS", "VmHWM"), in bytes; 0 where
/// /proc does not say.
int64_t processStatusBytes(const std::string &key);

std::string trainReportJson(const Plan &plan, const TrainOptions &options,
                            const TrainResult &result);

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_TRAIN_REPORT_H
