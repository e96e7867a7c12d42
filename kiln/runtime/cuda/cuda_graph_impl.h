// CapturedGraph: the work a function queues on a stream, recorded once as a CUDA graph
// (stream capture) and replayed with one cuGraphLaunch: a step's dozens of kernel launches,
// library calls and copies cost one launch on the host, and the GPU runs them without gaps.
#pragma once

#include <cuda.h>

#include <functional>
#include <string>

namespace kiln::cuda {

class CapturedGraph {
 public:
  /// Captures what `enqueue` queues on `stream` (this thread only: the capture mode is
  /// thread-local, so the transfer thread's copies go on while it records). `enqueue` must
  /// queue stream work only: no allocation, no host wait, no host callback. Throws the error of
  /// `enqueue`, or CompileError naming `label` when the driver cannot record or instantiate it.
  CapturedGraph(CUstream stream, const std::function<void()>& enqueue, const std::string& label);
  ~CapturedGraph();
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;

  /// Queues the recorded work on `stream` (in stream order with everything else on it).
  void launch(CUstream stream) const;

 private:
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
};

}  // namespace kiln::cuda
