#pragma once
#include <libpsl.h>
