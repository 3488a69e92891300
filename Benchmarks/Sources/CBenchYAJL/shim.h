#ifndef FLATLAND_CBENCHYAJL_SHIM_H
#define FLATLAND_CBENCHYAJL_SHIM_H

// libyajl for the benchmarks' raw-yajl floor (the library's own module is not a product).
#include <yajl/yajl_parse.h>

/// `yajl_config` is variadic, which Swift cannot call: one fixed-arity wrapper.
static inline int flatland_bench_yajl_config(yajl_handle handle, yajl_option option, int enabled) {
    return yajl_config(handle, option, enabled);
}

#endif
