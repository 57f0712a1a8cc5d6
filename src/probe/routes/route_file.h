// The namespace a file of src/probe/routes/ keeps its own names in.
//
// Route files are compiled several to a unit in a unity build (EXTMEM_UNITY):
// their file-local names (server(), kLegs, ...) would meet there. CMake defines
// EXTMEM_UNITY_ID to a value unique to each file of a unity unit
// (UNITY_BUILD_UNIQUE_ID); a file's local names go in
// `namespace { namespace EXTMEM_ROUTE_FILE { ... } }`, and its RouteDefs are
// copied out to extmem::probe by EXTMEM_ROUTE.
#pragma once

#ifdef EXTMEM_UNITY_ID
#define EXTMEM_ROUTE_FILE EXTMEM_UNITY_ID
#else
#define EXTMEM_ROUTE_FILE route_file
#endif

/// Registers the RouteDef `name` of this file's EXTMEM_ROUTE_FILE namespace as a
/// row of the probe, printed at `place` (rows print in ascending place; the
/// places of the existing rows are tens, so a new row fits between two). Write
/// it at the start of a line, inside namespace extmem::probe, after the
/// file-local namespace: `EXTMEM_ROUTE(kT1OpaqueFd, 30);`. The build generates
/// the route table from these lines (cmake/route_table.cmake), so a route file
/// is all a new route needs; a place or name used twice fails the build.
#define EXTMEM_ROUTE(name, place) extern const RouteDef name = EXTMEM_ROUTE_FILE::name
