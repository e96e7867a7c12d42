#include "kiln/runtime/cuda/cuda_graph_impl.h"

#include "kiln/core/check.h"
#include "kiln/runtime/cuda/cuda_driver_impl.h"

namespace kiln::cuda {

CapturedGraph::CapturedGraph(CUstream stream, const std::function<void()>& enqueue, const std::string& label) {
  const Driver& d = driver();
  check(d.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "cuStreamBeginCapture");
  try {
    enqueue();
  } catch (...) {
    CUgraph partial = nullptr;
    if (d.cuStreamEndCapture(stream, &partial) == CUDA_SUCCESS && partial != nullptr) d.cuGraphDestroy(partial);
    throw;
  }
  if (const CUresult r = d.cuStreamEndCapture(stream, &graph_); r != CUDA_SUCCESS)
    KILN_THROW(CompileError, "[cuda] ", label, ": the step could not be recorded as a CUDA graph: ", error_text(r),
               ". Hint: KILN_CUDA_GRAPHS=0 launches its steps one by one.");
  if (const CUresult r = d.cuGraphInstantiate(&exec_, graph_, 0); r != CUDA_SUCCESS) {
    d.cuGraphDestroy(graph_);
    KILN_THROW(CompileError, "[cuda] ", label, ": the CUDA graph of the step could not be instantiated: ", error_text(r),
               ". Hint: KILN_CUDA_GRAPHS=0 launches its steps one by one.");
  }
}

CapturedGraph::~CapturedGraph() {
  const Driver& d = driver();
  if (exec_ != nullptr) d.cuGraphExecDestroy(exec_);
  if (graph_ != nullptr) d.cuGraphDestroy(graph_);
}

void CapturedGraph::launch(CUstream stream) const { check(driver().cuGraphLaunch(exec_, stream), "cuGraphLaunch"); }

}  // namespace kiln::cuda
