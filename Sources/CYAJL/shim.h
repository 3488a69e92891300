#ifndef FLATLAND_CYAJL_SHIM_H
#define FLATLAND_CYAJL_SHIM_H

#include <yajl/yajl_parse.h>
#include <yajl/yajl_version.h>

/// `yajl_config` is variadic, which Swift cannot call: one fixed-arity wrapper.
static inline int flatland_yajl_config(yajl_handle handle, yajl_option option, int enabled) {
    return yajl_config(handle, option, enabled);
}

#endif
