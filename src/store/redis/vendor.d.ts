// cluster-key-slot ships no types: the CRC16 slot of a key (of its hash tag, when it has one), as Redis Cluster computes it.
declare module 'cluster-key-slot' {
  function calculateSlot(key: string | Buffer): number;
  export default calculateSlot;
}
