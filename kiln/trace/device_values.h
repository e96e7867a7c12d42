// Where a variable's value lives between steps: in a Buffer on the device of the programs that
// use it (one per replica), so weights and slots never go back to the host during fit. On a
// host-addressable device the buffer is the variable's host storage itself (nothing to copy or
// sync); on any other device the host storage is a copy, refreshed when host code reads it.
#pragma once

#include "kiln/runtime/buffer.h"
#include "kiln/runtime/device.h"
#include "kiln/trace/trace_context.h"

namespace kiln::trace {

/// Replica `replica`'s value of `variable` on `device`: the buffer it already has there, or a
/// new one copied from the host (after bringing back a value left on another device).
runtime::Buffer device_value(VariableState& variable, int replica, runtime::Device& device);
/// A program wrote `result` as the replica's new value: it becomes the value (copied into the
/// existing buffer where the program returned it apart, so host storage keeps its identity).
void note_device_update(VariableState& variable, int replica, const runtime::Buffer& result);
/// Brings every replica's device value back into its host storage where the device has newer
/// values. `for_write`: host code may change the host storage next, so device copies are
/// dropped and the next step copies the value again.
void sync_to_host(VariableState& variable, bool for_write);
/// Host code overwrites every replica's host storage next: the device copies are dropped
/// without bringing their values back (the next step copies the new value).
void discard_device_values(VariableState& variable);

}  // namespace kiln::trace
