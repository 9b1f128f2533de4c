pub mod containerd;
