// triptych's exceptions. Library code throws one of these with a message a learner can act on
// ("gemm: A has shape [3, 4], expected [5, 4] for M=5, K=4"); the CLI prints it and exits non-zero.
//
//   InvalidArgument  bad sizes, parameters or tensors passed to an op
//   Unsupported      a backend that lacks an op or an algorithm (the message names what it has)
//   CudaError        the CUDA runtime or the simulator refused or failed a launch or a copy
//   DataError        a missing, truncated or corrupt file
#pragma once

#include <stdexcept>
#include <string>

namespace triptych {

struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct InvalidArgument : Error {
    using Error::Error;
};

struct Unsupported : Error {
    using Error::Error;
};

struct CudaError : Error {
    using Error::Error;
};

struct DataError : Error {
    using Error::Error;
};

}  // namespace triptych
