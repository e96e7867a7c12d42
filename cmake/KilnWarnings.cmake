# kiln_set_warnings(target): the warning set every Kiln target compiles with.
function(kiln_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow)
  if(KILN_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
