// The namespace a file of src/probe/routes/ keeps its own names in.
//
// Route files are compiled several to a unit in a unity build (EXTMEM_UNITY):
// their file-local names (server(), kLegs, ...) would meet there. CMake defines
// EXTMEM_UNITY_ID to a value unique to each file of a unity unit
// (UNITY_BUILD_UNIQUE_ID); a file's local names go in
// `namespace { namespace EXTMEM_ROUTE_FILE { ... } }`, and its RouteDefs are
// copied out to extmem::probe by qualified name.
#pragma once

#ifdef EXTMEM_UNITY_ID
#define EXTMEM_ROUTE_FILE EXTMEM_UNITY_ID
#else
#define EXTMEM_ROUTE_FILE route_file
#endif
