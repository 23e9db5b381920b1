// The echogarden WASM packages ship without typings; each engine file narrows what it uses.
declare module '@echogarden/espeak-ng-emscripten' {
  const init: (moduleArg?: Record<string, unknown>) => Promise<unknown>;
  export default init;
}
declare module '@echogarden/sonic-wasm' {
  const init: (moduleArg?: Record<string, unknown>) => Promise<unknown>;
  export default init;
}
